"""Compute microversions, oldest first; a test asserts the latest.

Every version up to the last entry must be correct for every route the
Compute service serves. Entries with a comment change something we serve
and are implemented; a comment in parentheses names a change to an API that
stowage does not serve (image cache, volume attachments, rescue), so the
version is correct by absence; entries without a comment change only such
APIs too.

2.86 checks every extra spec against Nova's registry
(`compute/extra_spec_registry.py`). Beyond 2.92, the next versions that touch
what is served are 2.94 (a hostname may be an FQDN) and 2.102 (rxtx_factor
and disabled leave the flavor views).
"""

VERSIONS = (
    "2.1",  # base API: versions, flavors, os-extra_specs, os-flavor-access
    "2.2",   # os-keypairs: type (ssh, x509); create 201, delete 204
    "2.3",   # servers: more OS-EXT-SRV-ATTR attributes (hostname, reservation_id, ...)
    "2.4",
    "2.5",   # servers: ip6 filter for non-admins
    "2.6",
    "2.7",  # addTenantAccess on a public flavor is a 409 (allowed before)
    "2.8",
    "2.9",   # servers: locked
    "2.10",  # os-keypairs: user_id (admins act for another user)
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
    "2.26",  # servers: tags in views, /servers/{id}/tags, tag filters
    "2.27",
    "2.28",
    "2.29",
    "2.30",
    "2.31",
    "2.32",
    "2.33",
    "2.34",
    "2.35",  # os-keypairs: limit, marker, keypairs_links
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
    "2.51",  # os-instance-actions: owners see events (without traceback); external
             # event volume-extended
    "2.52",  # servers: `tags` on create
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
    "2.76",  # external event power-update
    "2.77",
    "2.78",
    "2.79",
    "2.80",  # os-migrations: user_id/project_id filters and fields
    "2.81",  # (os-aggregates image cache: not served)
    "2.82",  # external event accelerator-request-bound
    "2.83",  # servers: owners may filter on availability_zone, config_drive, ..., user_id
    "2.84",  # os-instance-actions: event details (admins)
    "2.85",  # (volume attachment update: not served)
    "2.86",  # flavor extra specs checked against Nova's registry (extra_spec_registry.py)
    "2.87",  # (rescue of volume-backed servers: not served)
    "2.88",  # os-hypervisors: usage fields, statistics and /uptime gone; uptime in detail
    "2.89",  # (volume attachments show attachment_id, bdm_uuid: not served)
    "2.90",  # servers: hostname on create and update, shown to owners, owners' filter
    "2.91",  # unshelve: host (admin) and availability_zone null
    "2.92",  # os-keypairs: public_key required (no generation), '@' and '.' in names
)

MIN_VERSION = VERSIONS[0]
MAX_VERSION = VERSIONS[-1]
