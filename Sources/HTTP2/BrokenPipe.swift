import Glibc

/// OpenSSL writes to the socket with plain write(2): once the server has closed the connection, the next
/// write raises SIGPIPE, whose default action kills the whole process (a test runner, a worker embedding
/// this module). Linux has no per-socket opt-out that OpenSSL's socket BIO uses, so the first connection
/// sets SIGPIPE to ignored when it is still at its default; the write then fails with EPIPE and the
/// connection is reported lost. A handler the program installed itself is left alone.
enum BrokenPipe {
    static let ignored: Void = {
        let previous = signal(SIGPIPE, SIG_IGN)
        if previous != nil { _ = signal(SIGPIPE, previous) }  // not the default (nil): the program's choice stands
    }()
}
