/*
 * lex: the tokens of the rules language (docs/rules.md). Newlines only
 * matter to units: a unit word must be on the same line as its number.
 */
#ifndef DETECT_LEX_H
#define DETECT_LEX_H

#include <stddef.h>

enum detect_tok {
	TK_EOF,
	TK_IDENT,
	TK_NUM,
	TK_STR,
	TK_LBRACE,
	TK_RBRACE,
	TK_LBRACK,
	TK_RBRACK,
	TK_COMMA,
	TK_EQ,
	TK_SEMI,
	TK_ERROR, /* lexing failed; the lexer's why says why */
};

/* Units a number may carry. */
enum detect_tunit { TU_NONE, TU_PCT, TU_X, TU_STEPS, TU_SEC };

typedef struct detect_token {
	int         type;
	const char *p; /* the token's text in the input */
	size_t      len;
	int         line, col;
	double      num;  /* TK_NUM, converted to seconds for TU_SEC */
	int         unit; /* TK_NUM */
	char       *str;  /* TK_STR: decoded, malloc'd, owned by the token */
	size_t      slen;
} detect_token;

typedef struct detect_lexer {
	const char *s;
	size_t      len, pos;
	int         line, col;
	char        why[160]; /* TK_ERROR: what was expected, found */
	int         eline, ecol;
} detect_lexer;

void detect_lex_init(detect_lexer *lx, const char *s, size_t len);
/* Next token into *t (t->str is freed by the caller with free()). A
 * TK_STR that cannot be allocated is reported as TK_ERROR. */
void detect_lex_next(detect_lexer *lx, detect_token *t);
/* "'foo'", "number 3", "string \"a\"", "'{'", "end of file" */
void detect_tok_describe(const detect_token *t, char *buf, size_t len);

#endif /* DETECT_LEX_H */
