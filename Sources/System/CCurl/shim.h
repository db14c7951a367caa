// libcurl 7.88 (Debian's libcurl4-openssl-dev), for plain HTTPS calls: OAuth token exchange and webhooks.
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: each typed wrapper below is one
// argument type of theirs.
#ifndef HERALD_CCURL_SHIM_H
#define HERALD_CCURL_SHIM_H
#include <curl/curl.h>

/// A long option (timeouts, flags, CURLOPT_POST, CURLOPT_VERBOSE).
static inline CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
/// A string option (URL, CA file, proxy, POST fields copied with CURLOPT_COPYPOSTFIELDS).
static inline CURLcode ccurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
/// A pointer option (header lists, the write callback's user data).
static inline CURLcode ccurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
/// A curl_off_t option (CURLOPT_POSTFIELDSIZE_LARGE).
static inline CURLcode ccurl_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
/// The write callback: Swift passes a @convention(c) function.
typedef size_t (*ccurl_write_callback)(char *data, size_t size, size_t count, void *user);
static inline CURLcode ccurl_setopt_write_function(CURL *handle, ccurl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
/// The header callback, same shape as the write callback (for Retry-After and the like).
static inline CURLcode ccurl_setopt_header_function(CURL *handle, ccurl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}
/// The socket-opening callback: Herald judges each address libcurl is about to connect to (Web Push refuses
/// private ones), so the address checked is the address connected to.
static inline CURLcode ccurl_setopt_opensocket_function(CURL *handle, curl_opensocket_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}
/// The address inside libcurl's curl_sockaddr (a flexible C layout Swift does not read safely).
static inline const struct sockaddr *ccurl_sockaddr_address(const struct curl_sockaddr *address) { return &address->addr; }
/// Its protocol field (a Swift keyword as a field name).
static inline int ccurl_sockaddr_protocol(const struct curl_sockaddr *address) { return address->protocol; }
/// A long result (CURLINFO_RESPONSE_CODE).
static inline CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
#endif
