/// A value owned by one event loop that may travel through other threads but is touched only on that loop.
///
/// Sendable, so it can ride in the `@Sendable` closures of `execute` and `submit`; every read and write of
/// `value`, and making one, checks that it runs on the loop's own thread and stops the process otherwise.
/// That makes "this connection lives on that loop" a checked fact rather than a comment. A reference, so
/// writes through one copy are seen by every holder (all on the same thread, by the check).
/// @unchecked: `value` is reachable only through accessors that first check the loop's thread.
public final class LoopBound<Value>: @unchecked Sendable {
    public let loop: EventLoop
    private var storage: Value

    /// Binds `value` to `loop`; must be called on the loop (the value is presumed to have been made there).
    public init(_ value: Value, loop: EventLoop) {
        loop.owner.preconditionCurrent(#function)
        self.loop = loop
        storage = value
    }

    public var value: Value {
        get {
            loop.owner.preconditionCurrent(#function)
            return storage
        }
        _modify {
            loop.owner.preconditionCurrent(#function)
            yield &storage
        }
    }
}
