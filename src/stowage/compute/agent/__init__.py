"""The compute agent: resource tracker, network device providers, driver interface,
simulated driver, PCI tracker, power-state sync."""
