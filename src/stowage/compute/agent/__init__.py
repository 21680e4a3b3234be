"""The compute agent: resource tracker, driver interface, simulated driver, PCI tracker."""
