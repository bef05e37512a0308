// Preloaded into the conformance runner (NODE_OPTIONS=--require): a TCP server started without
// an explicit host (listen(0), app.listen(0)) binds 127.0.0.1 instead of all interfaces.
// Node routes every port listen through Server#_listen2(address, port, addressType, ...);
// rewriting the address there keeps listen() synchronous, which the suite relies on.
'use strict';
const net = require('net');
const listen2 = net.Server.prototype._listen2;
if (typeof listen2 !== 'function') throw new Error('loopback-only: net.Server#_listen2 is missing');
net.Server.prototype._listen2 = function (address, port, addressType, backlog, fd, flags) {
  const unbound = (fd === undefined || fd === null || fd < 0);
  if (unbound && (address === null || address === undefined || address === '::' || address === '0.0.0.0')) {
    return listen2.call(this, '127.0.0.1', port, 4, backlog, fd, flags);
  }
  return listen2.call(this, address, port, addressType, backlog, fd, flags);
};
