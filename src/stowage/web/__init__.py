"""HTTP pieces shared by the stowage services: routing, microversions, errors, auth,
the one JSON body loader, bounded schema-error reports, the request limits
(body size and time, header deadline, connection cap) that `stowage serve` runs,
and the client factory by which one service calls another (`service_clients`)."""
