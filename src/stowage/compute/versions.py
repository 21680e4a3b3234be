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
    "2.3",   # servers: more OS-EXT-SRV-ATTR attributes (hostname, reservation_id, ...)
    "2.4",
    "2.5",   # servers: ip6 filter for non-admins
    "2.6",
    "2.7",  # addTenantAccess on a public flavor is a 409 (allowed before)
    "2.8",
    "2.9",   # servers: locked
    "2.10",
    "2.11",
    "2.12",
    "2.13",
    "2.14",
    "2.15",
    "2.16",  # servers: host_status (admin)
    "2.17",
    "2.18",
    "2.19",  # servers: description (create, update, view)
    "2.20",
    "2.21",  # os-instance-actions of deleted servers stay visible
    "2.22",
    "2.23",  # os-migrations: migration_type, links; GET /servers/{id}/migrations[/{id}]
    "2.24",
    "2.25",
    "2.26",  # servers: tags (always [] here), tag filters
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
    "2.37",  # servers: networks required on create, "auto"/"none"
    "2.38",  # servers: an unknown status filter is a 400
    "2.39",
    "2.40",
    "2.41",
    "2.42",  # servers: tag on networks and block_device_mapping_v2 items
    "2.43",
    "2.44",
    "2.45",
    "2.46",
    "2.47",  # servers: flavor inlined (original_name, vcpus, ram, ..., extra_specs)
    "2.48",
    "2.49",
    "2.50",
    "2.51",  # os-instance-actions: owners see events (without traceback)
    "2.52",  # OPEN: servers: `tags` on create is refused (no tag storage yet)
    "2.53",
    "2.54",
    "2.55", # flavor description: in views, on create, PUT /flavors/{id}
    "2.56",  # migrate: optional host
    "2.57",  # servers: personality dropped from create
    "2.58",  # os-instance-actions: updated_at, limit/marker, changes-since
    "2.59",  # os-migrations: uuid, limit/marker, changes-since; unknown parameters are 400
    "2.60",
    "2.61", # extra_specs in flavor detail/show/create/update views
    "2.62",  # os-instance-actions: events carry host (admin) and hostId
    "2.63",  # servers: trusted_image_certificates null; OPEN: refused on create
    "2.64",
    "2.65",
    "2.66",  # changes-before on servers, os-instance-actions, os-migrations
    "2.67",  # servers: volume_type in block_device_mapping_v2
    "2.68",
    "2.69",
    "2.70",
    "2.71",  # servers: server_groups in show and update
    "2.72",
    "2.73",  # servers: locked_reason, locked filter and sort key
    "2.74",  # servers: host/hypervisor_hostname on create (admin)
    # servers: PUT answers the full view; unknown GET /servers[/detail] parameters are 400
    "2.75", # swap 0 instead of ""; unknown query parameters on GET /flavors[/detail] are 400
    "2.76",
    "2.77",
    "2.78",
    "2.79",
    "2.80",  # os-migrations: user_id/project_id filters and fields
)

MIN_VERSION = VERSIONS[0]
MAX_VERSION = VERSIONS[-1]
