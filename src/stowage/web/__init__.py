"""HTTP pieces shared by the stowage services: routing, microversions, errors, auth."""
