"""The Network service: a Networking API v2.0 subset (Neutron-compatible).

Networks with one provider segment, subnets, ports with fixed IPs and
bindings (several per port, one active, for live migration), QoS policies
with minimum-bandwidth rules, and the port's `resource_request` that those
rules turn into (see `resource_request`, which compute also uses to read
it), security groups, and Neutron's quotas (`quotas`: limits, usage, the
check every create makes). Records live next to their tables (`networks`,
`subnets`, `ports`, `ipam`, `bindings`, `qos`, `security_groups`); `policy`
holds Neutron's rules (including the quota rules), which the records'
writes ask through a `policy.Guard` before a create claims its quota in the
same transaction; `api/` holds the handlers; `app` assembles the service;
`client` is what compute uses to read ports and write their
bindings, in-process or over HTTP. The service does not talk to Placement:
the allocation a port holds is written into its binding by compute.
"""
