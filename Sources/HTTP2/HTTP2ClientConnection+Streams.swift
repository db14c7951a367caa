import CNghttp2
import Foundation
import Reactor

/// The request side of a connection: submitting streams within the server's limit, what nghttp2 reports
/// about them, and the sweep that enforces deadlines and PING.
extension HTTP2ClientConnection {
    // MARK: requests

    func enqueue(_ context: RequestContext) -> Bool {
        switch phase {
        case .closed, .draining: return false
        default: break
        }
        if phase == .ready && queue.isEmpty && streams.count < maxConcurrentStreams {
            submit(context)
        } else {
            guard queue.count < options.maxQueuedRequests else { return false }
            queue.append(context)
        }
        requestFlush()
        return true
    }

    func requestFlush() {
        needsFlush = true
        if inEntry || flushScheduled { return }
        flushScheduled = true
        // A zero-delay timer runs after the current loop iteration: one SSL_write for a whole burst of sends.
        // Strong captures throughout: weak references would put every retain of the connection on Swift's slow
        // side-table path, and the connection lives until closed anyway (`keepAlive`).
        loop.schedule(afterNanoseconds: 0) { [self] in
            flushScheduled = false
            entry {}
        }
    }

    func submit(_ context: RequestContext) {
        guard let session else { return }
        let request = context.request
        scratchBytes.removeAll(keepingCapacity: true)
        scratchSpans.removeAll(keepingCapacity: true)
        let noIndex = UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        addHeader(":method", request.method, 0)
        addHeader(":scheme", "https", 0)
        addHeader(":authority", request.authority ?? defaultAuthority, 0)
        addHeader(":path", request.path, noIndex)
        for header in request.headers {
            // A bearer token must never enter an HPACK table, even if the caller forgot to say so.
            let secret = header.neverIndex || header.name == "authorization"
            addHeader(header.name, header.value, secret ? noIndex : 0)
        }
        var provider = nghttp2_data_provider()
        provider.read_callback = bodyReadCallback
        let hasBody = !request.body.isEmpty
        let streamID: Int32 = scratchBytes.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            scratchNV.removeAll(keepingCapacity: true)
            for span in scratchSpans {
                scratchNV.append(nghttp2_nv(name: base + span.0, value: base + span.2, namelen: span.1, valuelen: span.3, flags: span.4))
            }
            return scratchNV.withUnsafeBufferPointer { nva in
                hasBody
                    ? nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, &provider, nil)
                    : nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, nil, nil)
            }
        }
        if streamID < 0 {
            if context.decide(.failure(.notSent("nghttp2_submit_request: \(String(cString: nghttp2_strerror(streamID)))"))) {
                toDeliver.append(context)
            }
            if streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue { startDraining() }
            return
        }
        context.streamID = streamID
        streams[streamID] = context
        if streams.count > maxObservedOpenStreams { maxObservedOpenStreams = streams.count }
        // Stream ids run out at 2^31: retire well before, the pool opens a fresh connection.
        if streamID > 0x7FF0_0000 { startDraining() }
    }

    func addHeader(_ name: String, _ value: String, _ flags: UInt8) {
        // Through the contiguous UTF-8 buffers: appending a String.UTF8View goes element by element.
        var name = name
        var value = value
        let nameStart = scratchBytes.count
        name.withUTF8 { scratchBytes.append(contentsOf: $0) }
        let valueStart = scratchBytes.count
        value.withUTF8 { scratchBytes.append(contentsOf: $0) }
        scratchBytes.append(0)  // keeps the base address valid even when every header is empty
        scratchSpans.append((nameStart, valueStart - nameStart, valueStart, scratchBytes.count - 1 - valueStart, flags))
    }

    func startDraining() {
        retiring = true
        if phase == .ready || phase == .awaitingSettings {
            phase = .draining
            failQueued(.notSent("connection retired"))
            pendingEvents.append(.draining(connectionID: id))
        }
    }

    func failQueued(_ error: HTTP2ClientError) {
        for context in queue.removeAll() where context.decide(.failure(error)) { toDeliver.append(context) }
    }

    func dispatchQueued() {
        while let context = queue.first {
            if context.done {
                _ = queue.popFirst()
                continue
            }
            guard phase == .ready, streams.count < maxConcurrentStreams else { return }
            _ = queue.popFirst()
            submit(context)
            needsFlush = true
        }
    }

    // MARK: nghttp2 callbacks (called only from inside mem_recv / mem_send)

    func receivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let context = streams[streamID] else { return }
        if name.count == 7, name.elementsEqual(":status".utf8) {
            var status = 0
            for byte in value where byte >= 48 && byte <= 57 { status = status * 10 + Int(byte - 48) }
            context.status = status
            if status < 200 { context.headers.removeAll() }  // an interim 1xx answer: the final one follows
            return
        }
        context.headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    func receivedData(streamID: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        streams[streamID]?.body.append(contentsOf: data)
    }

    func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let context = streams[streamID] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let count = context.request.body.withUnsafeBufferPointer { body -> Int in
            let count = min(length, body.count - context.bodyOffset)
            if count > 0 { buffer.update(from: body.baseAddress! + context.bodyOffset, count: count) }
            return count
        }
        context.bodyOffset += count
        if context.bodyOffset >= context.request.body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }

    func streamClosed(streamID: Int32, errorCode: UInt32) {
        guard let context = streams.removeValue(forKey: streamID) else { return }
        capacityFreed = true
        if context.done { return }
        let outcome: Result<HTTP2Response, HTTP2ClientError>
        if let goaway, streamID > goaway.lastStreamID {
            outcome = .failure(.goawayUnprocessed(lastStreamID: goaway.lastStreamID, errorCode: goaway.errorCode, reason: goaway.reason))
        } else if errorCode == NGHTTP2_NO_ERROR.rawValue && context.status >= 200 {
            responsesReceived += 1
            outcome = .success(HTTP2Response(status: context.status, headers: context.headers, body: context.body, connectionID: id))
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            outcome = .failure(.refusedStream)
        } else {
            outcome = .failure(.streamReset(errorCode: errorCode))
        }
        context.decide(outcome)
        toDeliver.append(context)
    }

    func requestNotSent(streamID: Int32, libError: Int32) {
        guard let context = streams.removeValue(forKey: streamID) else { return }
        capacityFreed = true
        let error: HTTP2ClientError
        if let goaway {
            error = .goawayUnprocessed(lastStreamID: goaway.lastStreamID, errorCode: goaway.errorCode, reason: goaway.reason)
        } else {
            error = .notSent(String(cString: nghttp2_strerror(libError)))
        }
        if context.decide(.failure(error)) { toDeliver.append(context) }
    }

    func receivedSettings() {
        if phase == .awaitingSettings {
            phase = .ready
            pendingEvents.append(.connected(connectionID: id, maxConcurrentStreams: maxConcurrentStreams))
        }
        capacityFreed = true
    }

    func receivedPingAck() { pingSentAt = nil }

    func receivedGoaway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        let reason = Self.goawayReason(debugData)
        goaway = (lastStreamID, errorCode, reason)
        if phase == .ready || phase == .awaitingSettings { phase = .draining }
        failQueued(.goawayUnprocessed(lastStreamID: lastStreamID, errorCode: errorCode, reason: reason))
        pendingEvents.append(.goaway(connectionID: id, lastStreamID: lastStreamID, errorCode: errorCode, reason: reason))
    }

    /// APNs puts `{"reason":"..."}` in the debug data; anything else is passed on as text.
    static func goawayReason(_ data: [UInt8]) -> String? {
        guard !data.isEmpty else { return nil }
        if let object = try? JSONSerialization.jsonObject(with: Data(data)) as? [String: Any],
           let reason = object["reason"] as? String {
            return reason
        }
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: timers

    func startSweep() {
        // The timer holds the connection until it fires or `shutdown` cancels it.
        sweepTimer = loop.schedule(afterMilliseconds: options.sweepIntervalMilliseconds) { [self] in
            guard phase != .closed else { return }
            entry { sweep() }
            if phase != .closed { startSweep() }
        }
    }

    func sweep() {
        let now = monotonicNanos()
        switch phase {
        case .resolving, .tcpConnecting, .proxy, .handshaking, .awaitingSettings:
            if now >= connectDeadline {
                let error = HTTP2ClientError.connectFailed("\(endpoint): no HTTP/2 connection within \(options.connectTimeoutMilliseconds) ms")
                return shutdown(error, inFlight: error, queued: error)
            }
        case .ready, .draining:
            if let sent = pingSentAt {
                if now &- sent >= UInt64(options.pingTimeoutMilliseconds) &* 1_000_000 {
                    return lose("no PING ACK within \(options.pingTimeoutMilliseconds) ms")
                }
            } else if now &- lastReadAt >= UInt64(options.pingIdleMilliseconds) &* 1_000_000, let session {
                if nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 {
                    pingSentAt = now
                    needsFlush = true
                }
            }
        case .idle, .closed:
            break
        }
        for (streamID, context) in streams where !context.done && context.deadline <= now {
            context.decide(.failure(.timedOut))
            toDeliver.append(context)
            if let session { _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue) }
            needsFlush = true
        }
        queue.forEach { context in
            if !context.done && context.deadline <= now {
                context.decide(.failure(.queueTimedOut))
                toDeliver.append(context)
            }
        }
    }
}
