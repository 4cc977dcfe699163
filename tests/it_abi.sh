#!/bin/sh
# The ABI of libvitals.so is exactly include/vitals.h: the library exports
# the functions the header declares (VT_API) and nothing else; the wire
# codec and the emitter's internals it is built from stay hidden.
. "$(dirname "$0")/lib.sh"

LIB=$BIN/libvitals.so
nm -D --defined-only "$LIB" | awk '{ print $NF }' | sort >"$T/exported"
sed -n 's/^VT_API .*[ *]\(vt_[a-z_]*\)(.*/\1/p' include/vitals.h |
	sort >"$T/declared"

check "libvitals.so exports symbols" test -s "$T/exported"
check "every exported symbol is vt_*" \
	sh -c "! grep -v '^vt_' '$T/exported'"
if grep -v '^vt_' "$T/exported" >"$T/extra"; then
	echo "exported beyond the API:"
	sed 's/^/	/' "$T/extra"
fi
check "include/vitals.h declares functions" test -s "$T/declared"
check "the exported symbols are the functions of include/vitals.h" \
	cmp -s "$T/exported" "$T/declared"

# The structs of the header as the Python package mirrors them: every
# field at the same offset with the same size, and nothing past the end.
# A field added to vt_opts but not to _lib.Opts would let vt_opts_init()
# write past what Python allocated.
python3 - "$T" <<'EOF'
import sys
sys.path.insert(0, "emitter/python")
from vitals import _lib
t = sys.argv[1]
with open(t + "/layout.c", "w") as c, open(t + "/layout.py", "w") as p:
    c.write('#include <stddef.h>\n#include <stdio.h>\n#include "vitals.h"\n'
            "int main(void) {\n")
    for cname, py in (("vt_opts", _lib.Opts), ("vt_stats", _lib.Stats)):
        c.write('printf("%%s %%zu\\n", "%s", sizeof(%s));\n' % (cname, cname))
        p.write("%s %d\n" % (cname, _lib.ctypes.sizeof(py)))
        for name, _ in py._fields_:
            c.write('printf("%%s.%%s %%zu %%zu\\n", "%s", "%s", '
                    "offsetof(%s, %s), sizeof(((%s *) 0)->%s));\n"
                    % (cname, name, cname, name, cname, name))
            f = getattr(py, name)
            p.write("%s.%s %d %d\n" % (cname, name, f.offset, f.size))
    c.write("return 0;\n}\n")
EOF
check "a C program builds with the Python package's field names" \
	${CC:-cc} -std=c11 -Iinclude -o "$T/layout" "$T/layout.c"
"$T/layout" >"$T/layout.c.out" 2>/dev/null
check "Python's Opts and Stats have the C layout of vt_opts and vt_stats" \
	cmp -s "$T/layout.c.out" "$T/layout.py"
cmp -s "$T/layout.c.out" "$T/layout.py" ||
	diff "$T/layout.c.out" "$T/layout.py"
finish
