"""Who may see and change which image: Glance's rule names and secure-RBAC defaults.

With the defaults (`[policy] enforce_new_defaults = true`, as Glance ships
them since 2023.2):

- admins see and change every image;
- a project's **readers** list images and see its own, public and community
  ones (`get_images`, `get_image`); its **members** also create images owned
  by the project (`add_image`), change, upload to and delete them
  (`modify_image`, `upload_image`, `delete_image`), deactivate and
  reactivate them (`deactivate`, `reactivate`), make them community images
  (`communitize_image`) and download the data of the images they may see
  (`download_image`); only an admin downloads a deactivated image's data;
- making an image public (`publicize_image`) is for admins;
- a token without a role, or without a project (system scope), may do none
  of it.

A refused change of an image the caller may see is 403 ("You are not
authorized to complete modify_image action."); of one the caller may not
see, 404, so that a refusal gives nothing away, as Glance answers. An
operator's `[policy]` file overrides any rule by name. Glance's image
members are not served, so `get_image` has no shared-member clause.
"""

from __future__ import annotations

from collections.abc import Mapping

from stowage.config import PolicySettings
from stowage.context import RequestContext
from stowage.errors import Forbidden, NotFound
from stowage.image.images import Image
from stowage.policy import Enforcer

__all__ = ["IMAGE_RULES", "enforcer", "target", "check", "denied"]

ADMIN = "role:admin"
_MEMBER = "role:member and project_id:%(project_id)s"
_READER = "role:reader and project_id:%(project_id)s"
ADMIN_OR_MEMBER = f"{ADMIN} or ({_MEMBER})"
ADMIN_OR_READER = f"{ADMIN} or ({_READER})"
# Glance's deprecated defaults (enforce_new_defaults = false): the `default` rule.
_LEGACY = "rule:default"

IMAGE_RULES: dict[str, tuple[str, str | None]] = {
    "context_is_admin": ("role:admin", None),
    "default": ("", None),
    "add_image": (f"{ADMIN} or ({_MEMBER} and project_id:%(owner)s)", _LEGACY),
    "get_image": (f"{ADMIN} or (role:reader and (project_id:%(project_id)s or "
                  '"public":%(visibility)s or "community":%(visibility)s))', _LEGACY),
    "get_images": (ADMIN_OR_READER, _LEGACY),
    "modify_image": (ADMIN_OR_MEMBER, _LEGACY),
    "publicize_image": (ADMIN, None),
    "communitize_image": (ADMIN_OR_MEMBER, _LEGACY),
    "delete_image": (ADMIN_OR_MEMBER, _LEGACY),
    "upload_image": (ADMIN_OR_MEMBER, _LEGACY),
    # Downloading needs the member role (a reader may see an image, not fetch it).
    "download_image": (f"{ADMIN} or (role:member and (project_id:%(project_id)s or "
                       '"public":%(visibility)s or "community":%(visibility)s))', _LEGACY),
    # Glance's defaults since 2023.1: the owner's members too (Tempest's
    # test_deactivate_reactivate_image deactivates as the project's member).
    "deactivate": (ADMIN_OR_MEMBER, _LEGACY),
    "reactivate": (ADMIN_OR_MEMBER, _LEGACY),
}


def enforcer(settings: PolicySettings) -> Enforcer:
    """Glance's rules with the operator's overrides."""
    return Enforcer(settings, IMAGE_RULES)


def target(image_id: str | None, owner: str | None, visibility: str) -> dict[str, object]:
    """What the rules see of an image: Glance's target names the owner `project_id` too."""
    return {"id": image_id, "project_id": owner, "owner": owner, "visibility": visibility}


def denied(action: str) -> Forbidden:
    return Forbidden(f"You are not authorized to complete {action} action.")


def check(rules: Enforcer, ctx: RequestContext, action: str, image: Image,
          changed: Mapping[str, object] | None = None) -> None:
    """Refuse `action` on `image` (with `changed` attributes, e.g. a new visibility):
    Forbidden if the caller may see the image, NotFound if not."""
    seen = target(image.id, image.owner, image.visibility)
    if rules.allowed(action, ctx, {**seen, **(changed or {})}):
        return
    if action != "get_image" and rules.allowed("get_image", ctx, seen):
        raise denied(action)
    raise NotFound(f"No image found with ID {image.id}")
