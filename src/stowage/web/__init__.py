"""HTTP pieces shared by the stowage services: routing, microversions, errors, auth,
the one JSON body loader, bounded schema-error reports, and the request limits
(body size and time, header deadline, connection cap) that `stowage serve` runs."""
