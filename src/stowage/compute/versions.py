"""Compute microversions, oldest first; a test asserts the latest.

Every version up to the last entry must be correct for every route the
Compute service serves. Entries with a comment change something we serve
and are implemented; the others change only APIs that stowage does not serve
yet (servers, hosts, migrations, ...), so they are correct by absence.

Why 2.80: 2.81-2.85 would also be correct for what is served today, but each
changes server or host APIs (image cache, accelerator events, server list
filters, event details, volume attachment updates) that the server work would
then have to honour on day one; 2.80 is the level it targets first. 2.86
(extra specs checked against Nova's whole registry) and 2.102 (rxtx_factor and
disabled leave flavor views) need flavor work before the maximum passes them.
"""

VERSIONS = (
    "2.1",  # base API: versions, flavors, os-extra_specs, os-flavor-access
    "2.2",
    "2.3",
    "2.4",
    "2.5",
    "2.6",
    "2.7",  # addTenantAccess on a public flavor is a 409 (allowed before)
    "2.8",
    "2.9",
    "2.10",
    "2.11",
    "2.12",
    "2.13",
    "2.14",
    "2.15",
    "2.16",
    "2.17",
    "2.18",
    "2.19",
    "2.20",
    "2.21",
    "2.22",
    "2.23",
    "2.24",
    "2.25",
    "2.26",
    "2.27",
    "2.28",
    "2.29",
    "2.30",
    "2.31",
    "2.32",
    "2.33",
    "2.34",
    "2.35",
    "2.36",
    "2.37",
    "2.38",
    "2.39",
    "2.40",
    "2.41",
    "2.42",
    "2.43",
    "2.44",
    "2.45",
    "2.46",
    "2.47",
    "2.48",
    "2.49",
    "2.50",
    "2.51",
    "2.52",
    "2.53",
    "2.54",
    "2.55", # flavor description: in views, on create, PUT /flavors/{id}
    "2.56",
    "2.57",
    "2.58",
    "2.59",
    "2.60",
    "2.61", # extra_specs in flavor detail/show/create/update views
    "2.62",
    "2.63",
    "2.64",
    "2.65",
    "2.66",
    "2.67",
    "2.68",
    "2.69",
    "2.70",
    "2.71",
    "2.72",
    "2.73",
    "2.74",
    "2.75", # swap 0 instead of ""; unknown query parameters on GET /flavors[/detail] are 400
    "2.76",
    "2.77",
    "2.78",
    "2.79",
    "2.80",
)

MIN_VERSION = VERSIONS[0]
MAX_VERSION = VERSIONS[-1]
