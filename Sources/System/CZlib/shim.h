// zlib (Debian's zlib1g-dev), for the Expo simulator's gzip request bodies. inflateInit2 is a macro, which Swift
// cannot call: the wrapper below is it.
#ifndef HERALD_CZLIB_SHIM_H
#define HERALD_CZLIB_SHIM_H
#include <zlib.h>

/// inflateInit2 for a gzip stream (windowBits 15 + 16: gzip header and trailer).
static inline int czlib_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}
#endif
