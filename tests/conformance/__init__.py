"""Run the upstream OpenStack Placement gabbi suite against a live server.

The upstream YAML files are never copied into this repository: they are read
from a side virtualenv (see ``sidevenv``). Every YAML file gets a fresh server
process and a fresh database; the fixtures in ``bridge`` re-create upstream's
test data over the Placement HTTP API instead of upstream's in-process DB calls.

Modules, in the order a run uses them:

    sidevenv     where the upstream YAML files come from
    settings     which target / database a run uses (environment variables)
    databases    one fresh database per YAML file
    targets      how to configure and launch stowage or upstream placement
    server       the server process: start, wait for ``GET /``, stop
    seeding      a small HTTP client that writes fixture data
    apifixture   APIFixture (server + database per file) and the policy/CORS
                 variants
    topologies, network_topologies
                 the data-carrying fixtures (providers, inventories, ...)
    bridge       the fixture module gabbi is given: upstream's class names
    suite        build one YAML file's gabbi tests and run them in-process
    known        the known-failures list (known_failures.txt)
    report       the per-file "P/T passed" table
    run          command line: print the table without pytest
    test_gabbits, summary
                 the pytest entry and its end-of-session summary (a plugin
                 the top-level tests/conftest.py registers)

Run it:

    python -m pytest tests/conformance                 # stowage, SQLite
    CONFORMANCE_TARGET=upstream python -m pytest tests/conformance
    STOWAGE_TEST_DB=postgresql python -m tests.conformance.run -j 4 -v
    python -m tests.conformance.run --target upstream inventory traits
"""
