"""The Keystone fixture for the tests of this package."""

from tests.keystone.fixture import keystone  # noqa: F401
