import Foundation
import Glibc
import HeraldTestSupport
import Testing

/// Issue 51, item 3: a listener out of open files pauses instead of spinning. The loop is level-triggered, so a
/// connection accept(2) cannot hand over (EMFILE) woke it again at once: `herald api` sat at 100 % CPU answering
/// nothing. Every listener (the API's, the worker's metrics, the simulators') now takes `AcceptBackoff`'s pause;
/// the simulator is the one with no cap of its own below the limit, so it is the one driven into EMFILE here.
@Suite struct AcceptBackoffTests {
    @Test func aListenerOutOfOpenFilesPausesInsteadOfSpinningAndServesOnceFilesAreFree() throws {
        let herald = try #require(heraldExecutable(), "the herald executable is built beside the tests")
        let server = try ChildProcess(name: "mock-apns", executable: "/usr/bin/prlimit",
                                      arguments: ["--nofile=40:40", "--", herald, "mock-apns", "--cleartext", "--port", "0"])
        defer { server.stop() }
        #expect(waitUntil(seconds: 30) { server.output.contains("\"port\"") }, "ready line: \(server.output)")
        let line = try #require(server.output.split(separator: "\n").first { $0.contains("\"port\"") })
        let ready = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let port = try #require(ready["port"] as? Int)

        // 80 connections against 40 open files: the kernel completes them all (the backlog), the simulator can take
        // only the first few dozen, and the rest stay pending while accept fails with EMFILE.
        var held = (0..<80).map { _ in connectLoopback(UInt16(port)) }
        defer { held.forEach { close($0) } }
        Thread.sleep(forTimeInterval: 0.5)
        let before = try cpuSeconds(pid: server.pid)
        Thread.sleep(forTimeInterval: 2)
        let spent = try cpuSeconds(pid: server.pid) - before
        // Spinning is a whole core, 2 s of CPU in 2 s; pausing 10 ms to 1 s between tries is a few milliseconds.
        #expect(spent < 0.5, "the simulator spent \(spent) s of CPU in 2 s at its open-file limit")

        // Files free again: the pending connections are taken and a new one is answered (an HTTP/2 server's
        // SETTINGS frame, its first bytes, is the answer).
        held.forEach { close($0) }
        held = []
        let fresh = connectLoopback(UInt16(port))
        defer { close(fresh) }
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]
        #expect(write(fresh, preface, preface.count) == preface.count)
        var header = [UInt8](repeating: 0, count: 9)
        #expect(waitUntil(seconds: 10) { recv(fresh, &header, 9, Int32(MSG_DONTWAIT)) == 9 })
        #expect(header[3] == 4, "the first frame is SETTINGS")
        #expect(server.isRunning)
    }

    /// utime + stime of `pid`, in seconds, from /proc.
    private func cpuSeconds(pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The fields after the command's closing parenthesis: state is field 3, utime 14 and stime 15.
        let fields = stat[stat.range(of: ")", options: .backwards)!.upperBound...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (Double(fields[11])! + Double(fields[12])!) / ticks
    }
}
