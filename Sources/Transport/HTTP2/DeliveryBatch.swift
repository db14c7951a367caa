/// What one entry into a connection decided, handed out at the end of the outermost entry (and after each chunk
/// of a long read), outside any nghttp2 callback, so that completions and event handlers may call back into the connection or pool.
/// A class: completions re-enter and append while a batch is being delivered.
final class DeliveryBatch {
    /// Inside `HTTP2ClientConnection.entry`: nested entries only do their work, the outermost one delivers.
    var inEntry = false
    /// Decided requests whose completions have not run yet.
    var decided: [RequestContext] = []
    /// The batch being delivered now (swapped with `decided`, so both keep their capacity).
    var delivering: [RequestContext] = []
    var events: [HTTP2ConnectionEvent] = []
    /// A stream closed or the limit rose: dispatch the queue and tell the owner.
    var capacityFreed = false
}
