"""HTTP pieces shared by the stowage services: routing, microversions, errors, auth,
the one JSON body loader and bounded schema-error reports."""
