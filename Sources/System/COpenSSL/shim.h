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
#include <openssl/params.h>
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
// --- Web Push (RFC 8291) and its simulator: P-256 and HMAC-SHA-256 without a look-up by name per message ---
/// A key-generation context for P-256, kept by its caller: `EVP_PKEY_generate` with it makes one key. EVP_EC_gen
/// looks the EC key manager and the curve up by name for every key; this does it once.
static inline EVP_PKEY_CTX *copenssl_p256_keygen_ctx(void) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL) return NULL;
    OSSL_PARAM params[2] = {OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"P-256", 0), OSSL_PARAM_construct_end()};
    if (EVP_PKEY_keygen_init(ctx) != 1 || EVP_PKEY_CTX_set_params(ctx, params) != 1) { EVP_PKEY_CTX_free(ctx); return NULL; }
    return ctx;
}
/// A P-256 public key from its 65-byte uncompressed point; NULL unless OpenSSL finds the point on the curve.
/// (d2i_PUBKEY of the same point runs OpenSSL 3's decoder chain, about seven times the cost.)
static inline EVP_PKEY *copenssl_p256_public_key(const unsigned char *point, size_t length) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL) return NULL;
    OSSL_PARAM params[3] = {OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"P-256", 0),
                            OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, length), OSSL_PARAM_construct_end()};
    EVP_PKEY *key = NULL;
    if (EVP_PKEY_fromdata_init(ctx) != 1 || EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    EVP_PKEY_CTX_free(ctx);
    return key;
}
/// ECDH on P-256: the 32-byte x coordinate of own * peer into `out`; 1 on success. The peer is not checked again
/// (EVP_PKEY_derive_set_peer's check costs a second scalar multiplication): callers make it from a point OpenSSL
/// found on the curve, which for P-256 (cofactor 1) is the whole public-key check.
static inline int copenssl_p256_ecdh(EVP_PKEY *own, EVP_PKEY *peer, unsigned char *out) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, own, NULL);
    if (ctx == NULL) return 0;
    size_t length = 32;
    int ok = EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_derive_set_peer_ex(ctx, peer, 0) == 1
        && EVP_PKEY_derive(ctx, out, &length) == 1 && length == 32;
    EVP_PKEY_CTX_free(ctx);
    return ok;
}
/// An HMAC-SHA-256 context, kept by its caller: HMAC and SHA-256 are fetched here once (the context holds them), and
/// EVP_MAC_init with each new key reuses them. Naming them per use (HMAC(), an HKDF EVP_PKEY_CTX) is a look-up by
/// name under a lock each time.
static inline EVP_MAC_CTX *copenssl_hmac_sha256_ctx(void) {
    EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (hmac == NULL) return NULL;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(hmac);
    EVP_MAC_free(hmac);
    if (ctx == NULL) return NULL;
    OSSL_PARAM params[2] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0), OSSL_PARAM_construct_end()};
    if (EVP_MAC_CTX_set_params(ctx, params) != 1) { EVP_MAC_CTX_free(ctx); return NULL; }
    return ctx;
}
/// An AES-128-GCM context (encrypt 1, decrypt 0), kept by its caller: the cipher is fetched here once (the context
/// holds it); each record then passes only its key and nonce to EVP_CipherInit_ex2 (naming the cipher again would
/// reset the context, and EVP_aes_128_gcm() is a look-up by name per use).
static inline EVP_CIPHER_CTX *copenssl_aes_128_gcm_ctx(int encrypt) {
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    if (cipher == NULL) return NULL;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx != NULL && EVP_CipherInit_ex2(ctx, cipher, NULL, NULL, encrypt, NULL) != 1) { EVP_CIPHER_CTX_free(ctx); ctx = NULL; }
    EVP_CIPHER_free(cipher);
    return ctx;
}
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
