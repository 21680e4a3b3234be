"""The Compute service (a Nova-compatible API): flavors, servers and their ports, moves, hosts."""
