#ifndef HERALD_BUILD_INFO_H
#define HERALD_BUILD_INFO_H

/// "commit <hash>, built <UTC time>" as build_shipped_herald (scripts/lib.sh) stamped it into the binary after
/// linking, or "commit unknown, built unknown" in an unstamped (development) build.
const char *herald_build_info(void);

#endif
