import COpenSSL

/// Keeps OpenSSL from freeing its global state in an `atexit` handler, for a program that calls this first.
///
/// A process exits while other threads may still be inside OpenSSL: a finished loop's thread running its
/// thread-local destructors (OpenSSL's per-thread state among them), a token fetch in libcurl. OpenSSL's
/// cleanup frees, under them, the locks and tables they use: under ThreadSanitizer a SEGV in
/// `CRYPTO_THREAD_unlock` as a loop made a TLS context (the second signal exits with `_exit` since), and, the
/// likely cause, a worker that ended on SIGABRT after a clean SIGTERM drain once in a test run. The process's
/// memory goes with it anyway. Only OpenSSL's first initialisation decides, so this must come before any other
/// OpenSSL call: `herald` and `herald-bench` call it first thing.
public func keepOpenSSLUntilExit() {
    _ = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
}
