// OpenSSL 3.0. Function-like macros Swift cannot import are wrapped here as inline functions.
#ifndef HERALD_COPENSSL_SHIM_H
#define HERALD_COPENSSL_SHIM_H
#include <stdio.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pkcs12.h>
#include <openssl/rand.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/kdf.h>  // HKDF for Web Push message encryption (RFC 8291)

static inline long copenssl_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long copenssl_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long copenssl_set_mode(SSL *ssl, long mode) { return SSL_set_mode(ssl, mode); }
static inline long copenssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline int copenssl_bio_reset(BIO *b) { return (int)BIO_reset(b); }
static inline long copenssl_bio_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline void copenssl_stack_x509_free(STACK_OF(X509) *s) { sk_X509_pop_free(s, X509_free); }
static inline int copenssl_stack_x509_num(STACK_OF(X509) *s) { return sk_X509_num(s); }
static inline X509 *copenssl_stack_x509_value(STACK_OF(X509) *s, int i) { return sk_X509_value(s, i); }
static inline long copenssl_ctx_add_extra_chain_cert(SSL_CTX *ctx, X509 *x) { return SSL_CTX_add_extra_chain_cert(ctx, x); }
// Appended for the APNs module: key generation macros (EVP_EC_gen/EVP_RSA_gen wrap a variadic call).
static inline EVP_PKEY *copenssl_ec_gen(const char *curve) { return EVP_EC_gen(curve); }
static inline EVP_PKEY *copenssl_rsa_gen(unsigned int bits) { return EVP_RSA_gen(bits); }

// --- Simulators (the APNs simulator) ---
/// ALPN for a server that speaks only HTTP/2: pick "h2" or fail the handshake (APNs refuses other protocols).
static inline int copenssl_mock_alpn_select_h2(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                              const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    unsigned int i = 0;
    while (i < inlen) {
        unsigned int len = in[i];
        if (i + 1 + len > inlen) break;
        if (len == 2 && in[i + 1] == 'h' && in[i + 2] == '2') { *out = in + i + 1; *outlen = 2; return SSL_TLSEXT_ERR_OK; }
        i += 1 + len;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}
static inline void copenssl_mock_ctx_select_h2(SSL_CTX *ctx) {
    SSL_CTX_set_alpn_select_cb(ctx, copenssl_mock_alpn_select_h2, NULL);
}
static inline EVP_PKEY *copenssl_mock_generate_p256(void) { return EVP_EC_gen("P-256"); }
static inline void copenssl_mock_free(void *p) { OPENSSL_free(p); }
static inline void copenssl_mock_x509v3_set_ctx_nodb(X509V3_CTX *ctx) { X509V3_set_ctx_nodb(ctx); }
// --- Shared by every module that calls OpenSSL ---
/// Drains OpenSSL's thread-local error queue into `buffer` as "error; error; ..." (NUL-terminated, truncated
/// to `size`). Returns how many errors there were, so callers can say "no detail" when there were none.
static inline int copenssl_drain_errors(char *buffer, size_t size) {
    int count = 0;
    size_t used = 0;
    if (size > 0) buffer[0] = 0;
    unsigned long code;
    while ((code = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(code, one, sizeof one);
        if (size > 0 && used + 3 < size) {
            int n = snprintf(buffer + used, size - used, "%s%s", count ? "; " : "", one);
            if (n > 0) used += (size_t)n < size - used ? (size_t)n : size - used - 1;
        }
        count++;
    }
    return count;
}
#endif
