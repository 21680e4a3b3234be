"""The Placement service: providers, inventories, traits, aggregates, consumers, allocations."""
