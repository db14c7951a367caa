import Dispatch
import Foundation
import Glibc

/// What the simulator commands (`mock-apns`, `mock-fcm`) share: signal handling and scratch directories.
enum CommandSupport {
    /// Blocks until SIGTERM or SIGINT; runs `onHangup` on each SIGHUP (a config reload).
    static func waitForTermination(onHangup: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "mock-signals")
        var sources: [DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { done.signal() }
            source.resume()
            sources.append(source)
        }
        signal(SIGHUP, SIG_IGN)
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        hangup.setEventHandler { onHangup() }
        hangup.resume()
        sources.append(hangup)
        done.wait()
        for source in sources { source.cancel() }
    }

    /// A new private directory under the system's temporary directory.
    static func temporaryDirectory(prefix: String) throws -> String {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("\(prefix).XXXXXX").utf8CString)
        guard let pointer = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw MockAPNsError.file("mkdtemp failed")
        }
        return String(cString: pointer)
    }
}
