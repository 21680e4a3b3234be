"""The Compute service (a Nova-compatible API): flavors now; servers, moves and hosts later."""
