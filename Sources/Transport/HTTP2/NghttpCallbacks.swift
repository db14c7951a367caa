import CNghttp2

// nghttp2 calls these C functions with the connection as `user_data` (unretained: the connection owns the
// session and frees it in deinit, so it outlives every callback). They only record what happened; no callback
// completes a request or re-enters nghttp2: completions run later in `HTTP2ClientConnection.finishEntry`.

/// Calls `body` with the connection without retaining it (the session's owner is alive by construction).
@inline(__always)
private func withConnection<R>(_ userData: UnsafeMutableRawPointer?, _ body: (HTTP2ClientConnection) -> R) -> R {
    Unmanaged<HTTP2ClientConnection>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)
}

let onHeaderCallback: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let name, let value, UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue else { return 0 }
    withConnection(userData) { $0.receivedHeader(
        streamID: frame.pointee.hd.stream_id,
        name: UnsafeBufferPointer(start: name, count: nameLength),
        value: UnsafeBufferPointer(start: value, count: valueLength)) }
    return 0
}

let onDataChunkCallback: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    guard let data else { return 0 }
    withConnection(userData) { $0.receivedData(streamID: streamID, UnsafeBufferPointer(start: data, count: length)) }
    return 0
}

let onStreamCloseCallback: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    withConnection(userData) { $0.streamClosed(streamID: streamID, errorCode: errorCode) }
    return 0
}

let onFrameNotSendCallback: nghttp2_on_frame_not_send_callback = { _, frame, libError, userData in
    guard let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue else { return 0 }
    withConnection(userData) { $0.requestNotSent(streamID: frame.pointee.hd.stream_id, libError: libError) }
    return 0
}

let onFrameRecvCallback: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame else { return 0 }
    let type = UInt32(frame.pointee.hd.type)
    let isAck = UInt32(frame.pointee.hd.flags) & NGHTTP2_FLAG_ACK.rawValue != 0
    switch type {
    case NGHTTP2_SETTINGS.rawValue where !isAck:
        withConnection(userData) { $0.receivedSettings() }
    case NGHTTP2_PING.rawValue where isAck:
        withConnection(userData) { $0.receivedPingAck() }
    case NGHTTP2_GOAWAY.rawValue:
        let goaway = frame.pointee.goaway
        let debug = goaway.opaque_data.map { Array(UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len)) } ?? []
        withConnection(userData) { $0.receivedGoaway(lastStreamID: goaway.last_stream_id, errorCode: goaway.error_code, debugData: debug) }
    default:
        break
    }
    return 0
}

let bodyReadCallback: nghttp2_data_source_read_callback = { _, streamID, buffer, length, dataFlags, _, userData in
    guard let buffer, let dataFlags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return withConnection(userData) { $0.readBody(streamID: streamID, into: buffer, length: length, flags: dataFlags) }
}
