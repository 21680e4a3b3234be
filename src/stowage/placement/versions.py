"""Placement microversions, oldest first; a test asserts the latest."""

VERSIONS = (
    "1.0",
    "1.1",   # provider aggregates
    "1.2",   # /resource_classes
    "1.3",   # member_of on GET /resource_providers
    "1.4",   # resources on GET /resource_providers
    "1.5",   # DELETE /resource_providers/{uuid}/inventories
    "1.6",   # /traits and provider traits
    "1.7",   # PUT /resource_classes/{name} is a bodiless create-or-validate
    "1.8",   # project_id and user_id required on PUT /allocations
    "1.9",   # GET /usages
    "1.10",  # GET /allocation_candidates
    "1.11",  # 'allocations' link on providers
    "1.12",  # dict-shaped PUT /allocations and allocation_requests
    "1.13",  # POST /allocations for several consumers at once
    "1.14",  # parent/root provider uuids, in_tree
    "1.15",  # last-modified and cache-control headers
    "1.16",  # limit on allocation candidates
    "1.17",  # required traits on allocation candidates, traits in summaries
    "1.18",  # required traits on GET /resource_providers
    "1.19",  # generation in provider aggregates
    "1.20",  # POST /resource_providers returns the provider
    "1.21",  # member_of=in: on allocation candidates
    "1.22",  # forbidden traits
    "1.23",  # error codes in error bodies
    "1.24",  # repeated member_of on GET /resource_providers
    "1.25",  # granular (numbered) request groups
    "1.26",  # reserved may equal total
    "1.27",  # all inventories in provider_summaries
    "1.28",  # consumer generations
    "1.29",  # nested providers in allocation candidates
    "1.30",  # POST /reshaper
    "1.31",  # in_tree on allocation candidates
    "1.32",  # forbidden aggregates (member_of=!...)
    "1.33",  # arbitrary request group suffixes
    "1.34",  # mappings in allocation requests
    "1.35",  # root_required
    "1.36",  # same_subtree and resourceless request groups
    "1.37",  # re-parenting and un-parenting providers
    "1.38",  # consumer types
    "1.39",  # any-of traits (required=in:A,B)
)
