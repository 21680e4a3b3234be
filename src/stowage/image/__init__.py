"""The Image service: an Image API v2 subset — image records and their data (images.py,
data.py), members of shared images (members.py), the glance-direct import (imports.py)
and the tasks that record it (tasks.py); handlers in api*.py, rules in policy.py."""
