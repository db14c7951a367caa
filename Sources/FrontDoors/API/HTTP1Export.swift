/// Re-exported because the handler's request is `HTTP1Parser.Request` (HTTP/2 streams become one too): whoever
/// serves through the API names it with `import API` alone, as before the parser had a module of its own.
@_exported import HTTP1
