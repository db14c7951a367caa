import Glibc

extension EventLoop {
    /// A listening TCP socket on `host:port` registered with `handler` (closed again if registering fails), and the
    /// port it got (port 0 picks one): how every server on a loop starts.
    public func listen(host: String, port: Int, backlog: Int32, handler: FileDescriptorHandler) throws(SystemError) -> (fd: Int32, port: Int) {
        let fd = try Sockets.listen(host: host, port: port, backlog: backlog)
        do {
            try register(fd: fd, handler: handler)
        } catch {
            Glibc.close(fd)
            throw error
        }
        return (fd, Sockets.localPort(fd))
    }
}
