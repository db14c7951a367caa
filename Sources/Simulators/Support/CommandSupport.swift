import Basics
import Dispatch
import Foundation
import Glibc

/// What the simulator commands (`mock-apns`, `mock-fcm`, `mock-hms`, `mock-webpush`) share: the command line's
/// edges, TLS files, the ready line, signal handling and scratch directories.
enum CommandSupport {
    /// Runs `command` on the words after its name (a leading `name` is skipped too).
    static func main(_ command: Command, name: String, arguments: [String]) -> Int32 {
        var words = arguments
        if words.first == name { words.removeFirst() }
        return command.main(words)
    }

    /// Says what went wrong on stderr (`herald <command>: <text>`) and returns the exit code.
    static func fail(_ command: String, _ text: String, code: Int32) -> Int32 {
        FileHandle.standardError.write(Data("herald \(command): \(text)\n".utf8))
        return code
    }

    /// The server's TLS files: `certificate` and `key` when given, else a CA and a server certificate generated in
    /// `directory` (default: a new temporary one named after `prefix`), with the CA file clients should trust.
    static func tlsFiles(certificate: String?, key: String?, generateIn directory: String?, prefix: String) throws -> (MockTLSFiles, caFile: String?) {
        if let certificate, let key { return (MockTLSFiles(certificateFile: certificate, privateKeyFile: key), nil) }
        let files = try MockTLSFiles.generate(in: try directory ?? temporaryDirectory(prefix: prefix))
        return (files, files.caFile)
    }

    /// Blocks until SIGTERM or SIGINT; on each SIGHUP, `reload(configFile)` when there is a config file.
    static func waitForTermination(reloading configFile: String?, _ reload: @escaping @Sendable (String) -> Void) {
        waitForTermination {
            if let configFile { reload(configFile) }
        }
    }

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

    /// The ready line names files for other processes, which may run elsewhere: absolute paths.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
    }

    /// A new private directory under the system's temporary directory.
    static func temporaryDirectory(prefix: String) throws -> String {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("\(prefix).XXXXXX").utf8CString)
        guard let pointer = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SimulatorError.file("mkdtemp failed")
        }
        return String(cString: pointer)
    }

    /// Prints the ready line (one JSON object) and writes it to `readyFile` if given. Returns what went wrong
    /// writing the file, nil when all is well.
    static func announce(_ ready: [String: Any], readyFile: String?) -> String? {
        let line = (try? JSONSerialization.data(withJSONObject: ready, options: [.sortedKeys, .withoutEscapingSlashes]))
            .map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
        guard let readyFile else { return nil }
        do {
            try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: readyFile), options: .atomic)
            return nil
        } catch {
            return "cannot write ready file \(readyFile): \(error)"
        }
    }

    /// The end of a simulator command: the ready line, then serve until `wait` returns, then `stop`.
    /// 0 after a clean stop, 73 when the ready file cannot be written.
    static func serve(_ ready: [String: Any], readyFile: String?, command: String, wait: () -> Void, stop: () -> Void) -> Int32 {
        if let problem = announce(ready, readyFile: readyFile) {
            stop()
            FileHandle.standardError.write(Data("herald \(command): \(problem)\n".utf8))
            return 73
        }
        wait()
        stop()
        return 0
    }

    /// SIGHUP: `replace` loads the config file again; a bad file leaves the config in force (and says why).
    static func reload(command: String, configFile: String, _ replace: () throws -> Void) -> Bool {
        do {
            try replace()
            FileHandle.standardError.write(Data("herald \(command): reloaded \(configFile)\n".utf8))
            return true
        } catch {
            FileHandle.standardError.write(Data("herald \(command): reload failed, keeping the old config: \(error)\n".utf8))
            return false
        }
    }
}
