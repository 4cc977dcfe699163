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
finish
