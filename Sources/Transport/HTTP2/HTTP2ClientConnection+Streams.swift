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
        if case let .ready(live) = phase, queue.isEmpty, streams.count < live.streamLimit(cappedAt: options.maxConcurrentStreamsLimit) {
            submit(context, on: live)
        } else {
            guard queue.count < options.maxQueuedRequests else { return false }
            queue.append(context)
        }
        requestFlush()
        return true
    }

    /// Outside an entry (say, a send after a Redis read) the write waits for `scheduleFlush`'s timer.
    func requestFlush() {
        output.needsFlush = true
        if !batch.inEntry { scheduleFlush() }
    }

    func submit(_ context: RequestContext, on live: LiveSession) {
        // Its queue time ran out between sweeps: writing it now could only earn a timeout with the outcome
        // unknown (and a duplicate on resend); unwritten it is certainly unprocessed.
        guard context.startWriting() else {
            if context.decide(.failure(.queueTimedOut)) { batch.decided.append(context) }
            return
        }
        let session = live.session.pointer
        let request = context.request
        headerBlock.reset()
        let noIndex = UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        headerBlock.add(":method", request.method, flags: 0)
        headerBlock.add(":scheme", "https", flags: 0)
        headerBlock.add(":authority", request.authority ?? defaultAuthority, flags: 0)
        headerBlock.add(":path", request.path, flags: noIndex)
        for header in request.headers {
            // A bearer token must never enter an HPACK table, even if the caller forgot to say so.
            let secret = header.neverIndex || header.name == "authorization"
            headerBlock.add(header.name, header.value, flags: secret ? noIndex : 0)
        }
        var provider = nghttp2_data_provider()
        provider.read_callback = bodyReadCallback
        let hasBody = !request.body.isEmpty
        let streamID: Int32 = headerBlock.withNameValues { nva in
            hasBody
                ? nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, &provider, nil)
                : nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, nil, nil)
        }
        if streamID < 0 {
            if context.decide(.failure(.notSent("nghttp2_submit_request: \(String(cString: nghttp2_strerror(streamID)))"))) {
                batch.decided.append(context)
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

    func startDraining() {
        guard enterDraining(goaway: nil) else { return }
        failQueued(.notSent("connection retired"))
        batch.events.append(.draining(connectionID: id))
    }

    /// A connection taking requests (or about to) stops; one already draining only learns of a GOAWAY.
    /// Returns whether it was taking requests.
    @discardableResult
    func enterDraining(goaway: Goaway?) -> Bool {
        switch phase {
        case let .ready(live), let .awaitingSettings(live, _):
            phase = .draining(live, goaway: goaway)
            return true
        case let .draining(live, _):
            if let goaway { phase = .draining(live, goaway: goaway) }
            return false
        case .idle, .resolving, .connecting, .proxy, .handshaking, .closed:
            return false
        }
    }

    func failQueued(_ error: HTTP2ClientError) {
        for context in queue.removeAll() where context.decide(.failure(error)) { batch.decided.append(context) }
    }

    func dispatchQueued() {
        while let context = queue.first {
            if context.done {
                _ = queue.popFirst()
                continue
            }
            guard case let .ready(live) = phase, streams.count < live.streamLimit(cappedAt: options.maxConcurrentStreamsLimit) else { return }
            _ = queue.popFirst()
            submit(context, on: live)
            output.needsFlush = true
        }
    }

    // MARK: nghttp2 callbacks (called only from inside mem_recv / mem_send)

    func receivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let context = streams[streamID] else { return }
        // Byte by byte: elementsEqual against a String's UTF8View took ~240 instructions per header.
        if name.count == 7, name[0] == UInt8(ascii: ":"), name[1] == UInt8(ascii: "s"), name[2] == UInt8(ascii: "t"),
           name[3] == UInt8(ascii: "a"), name[4] == UInt8(ascii: "t"), name[5] == UInt8(ascii: "u"), name[6] == UInt8(ascii: "s") {
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
        batch.capacityFreed = true
        if context.done { return }
        let outcome: Result<HTTP2Response, HTTP2ClientError>
        if let goaway = phase.goaway, streamID > goaway.lastStreamID {
            outcome = .failure(goaway.unprocessed)
        } else if errorCode == NGHTTP2_NO_ERROR.rawValue && context.status >= 200 {
            responsesReceived += 1
            outcome = .success(HTTP2Response(status: context.status, headers: context.headers, body: context.body, connectionID: id))
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            outcome = .failure(.refusedStream)
        } else {
            outcome = .failure(.streamReset(errorCode: errorCode))
        }
        context.decide(outcome)
        batch.decided.append(context)
    }

    func requestNotSent(streamID: Int32, libError: Int32) {
        guard let context = streams.removeValue(forKey: streamID) else { return }
        batch.capacityFreed = true
        let error: HTTP2ClientError
        if let goaway = phase.goaway {
            error = goaway.unprocessed
        } else {
            error = .notSent(String(cString: nghttp2_strerror(libError)))
        }
        if context.decide(.failure(error)) { batch.decided.append(context) }
    }

    func receivedSettings() {
        if case let .awaitingSettings(live, _) = phase {
            phase = .ready(live)
            batch.events.append(.connected(connectionID: id, maxConcurrentStreams: maxConcurrentStreams))
        }
        batch.capacityFreed = true
    }

    func receivedPingAck() { phase.session?.liveness.pingAcknowledged() }

    func receivedGoaway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        let reason = Self.goawayReason(debugData)
        let goaway = Goaway(lastStreamID: lastStreamID, errorCode: errorCode, reason: reason)
        enterDraining(goaway: goaway)
        failQueued(goaway.unprocessed)
        batch.events.append(.goaway(connectionID: id, lastStreamID: lastStreamID, errorCode: errorCode, reason: reason))
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
            guard !phase.isClosed else { return }
            entry { sweep() }
            if !phase.isClosed { startSweep() }
        }
    }

    func sweep() {
        let now = monotonicNanos()
        if let deadline = phase.connectDeadline, now >= deadline {
            let error = HTTP2ClientError.connectFailed("\(endpoint): no HTTP/2 connection within \(options.connectTimeoutMilliseconds) ms")
            return shutdown(error, inFlight: error, queued: error)
        }
        switch phase {
        case let .ready(live), let .draining(live, _):
            let verdict = live.liveness.verdict(
                at: now, idleNanos: UInt64(options.pingIdleMilliseconds) &* 1_000_000,
                timeoutNanos: UInt64(options.pingTimeoutMilliseconds) &* 1_000_000)
            switch verdict {
            case .dead:
                return lose("no PING ACK within \(options.pingTimeoutMilliseconds) ms")
            case .sendPing:
                if nghttp2_submit_ping(live.session.pointer, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 {
                    live.liveness.pingSent(at: now)
                    output.needsFlush = true
                }
            case .alive:
                break
            }
        default:
            break
        }
        let live = phase.session  // held across the loop: the RSTs go to a session that stays alive
        var timedOut = false
        for (streamID, context) in streams where !context.done && context.deadline <= now {
            context.decide(.failure(.timedOut))
            batch.decided.append(context)
            if let live { _ = nghttp2_submit_rst_stream(live.session.pointer, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue) }
            output.needsFlush = true
            timedOut = true
        }
        // Silence on a stream may be the server's; silence on the whole connection is a dead path: ask at once.
        if timedOut, let live, live.liveness.shouldProbeAfterTimeout,
           nghttp2_submit_ping(live.session.pointer, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 {
            live.liveness.pingSent(at: now)
        }
        queue.forEach { context in
            if !context.done && context.deadline <= now {
                context.decide(.failure(.queueTimedOut))
                batch.decided.append(context)
            }
        }
    }
}
