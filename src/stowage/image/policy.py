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
operator's `[policy]` file overrides any rule by name.

Image members (image/api_members.py): the owner's project members add and
remove them (`add_member`, `delete_member`), the owner's readers and the
member itself see them (`get_member(s)`), and only the member answers
(`modify_member`: `member_id` is the caller's project when it is one). Tasks
(image/api_tasks.py) need `tasks_api_access`, an admin's.

Metadata definitions (image/api_metadefs.py), as Glance's secure-RBAC
defaults: every `get_metadef_*` rule is `metadef_default` (anyone), every
write `metadef_admin` (admins); which namespaces one sees is the records'
to decide (metadefs.py: public ones and one's project's).
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
_ADMIN_OR_READER_OR_IMAGE_MEMBER = (f"{ADMIN} or role:reader and (project_id:%(project_id)s "
                                    "or project_id:%(member_id)s)")

IMAGE_RULES: dict[str, tuple[str, str | None]] = {
    "context_is_admin": ("role:admin", None),
    "default": ("", None),
    "add_image": (f"{ADMIN} or ({_MEMBER} and project_id:%(owner)s)", _LEGACY),
    # `shared` images pass here: the records (images.get) show them to members only.
    "get_image": (f"{ADMIN} or (role:reader and (project_id:%(project_id)s or "
                  "project_id:%(member_id)s or "
                  '"public":%(visibility)s or "community":%(visibility)s or '
                  '"shared":%(visibility)s))', _LEGACY),
    "get_images": (ADMIN_OR_READER, _LEGACY),
    "modify_image": (ADMIN_OR_MEMBER, _LEGACY),
    "publicize_image": (ADMIN, None),
    "communitize_image": (ADMIN_OR_MEMBER, _LEGACY),
    "delete_image": (ADMIN_OR_MEMBER, _LEGACY),
    "upload_image": (ADMIN_OR_MEMBER, _LEGACY),
    # Downloading needs the member role (a reader may see an image, not fetch it).
    "download_image": (f"{ADMIN} or (role:member and (project_id:%(project_id)s or "
                       'project_id:%(member_id)s or "public":%(visibility)s or '
                       '"community":%(visibility)s or "shared":%(visibility)s))', _LEGACY),
    # Glance's defaults since 2023.1: the owner's members too (Tempest's
    # test_deactivate_reactivate_image deactivates as the project's member).
    "deactivate": (ADMIN_OR_MEMBER, _LEGACY),
    "reactivate": (ADMIN_OR_MEMBER, _LEGACY),
    # Image members: the owner offers and withdraws, a member answers for itself.
    "add_member": (ADMIN_OR_MEMBER, _LEGACY),
    "delete_member": (ADMIN_OR_MEMBER, _LEGACY),
    "get_member": (_ADMIN_OR_READER_OR_IMAGE_MEMBER, _LEGACY),
    "get_members": (_ADMIN_OR_READER_OR_IMAGE_MEMBER, _LEGACY),
    "modify_member": (f"{ADMIN} or (role:member and project_id:%(member_id)s)", _LEGACY),
    # Tasks: every route also needs tasks_api_access, which is for admins.
    "get_task": (_LEGACY, None),
    "get_tasks": (_LEGACY, None),
    "add_task": (_LEGACY, None),
    "modify_task": (_LEGACY, None),
    "tasks_api_access": (ADMIN, None),
    **{name: ("rule:metadef_default", None) for name in (
        "get_metadef_namespace", "get_metadef_namespaces", "get_metadef_object",
        "get_metadef_objects", "get_metadef_property", "get_metadef_properties",
        "get_metadef_tag", "get_metadef_tags", "list_metadef_resource_types",
        "get_metadef_resource_type")},
    **{name: ("rule:metadef_admin", None) for name in (
        "add_metadef_namespace", "modify_metadef_namespace", "delete_metadef_namespace",
        "add_metadef_object", "modify_metadef_object", "delete_metadef_object",
        "add_metadef_property", "modify_metadef_property", "remove_metadef_property",
        "add_metadef_tag", "add_metadef_tags", "modify_metadef_tag", "delete_metadef_tag",
        "delete_metadef_tags", "add_metadef_resource_type_association",
        "remove_metadef_resource_type_association")},
    # Metadata definitions (api_metadefs.py): anyone reads what they may see, admins write.
    "metadef_default": ("", None),
    "metadef_admin": (ADMIN, None),
}


def enforcer(settings: PolicySettings) -> Enforcer:
    """Glance's rules with the operator's overrides."""
    return Enforcer(settings, IMAGE_RULES)


def target(image_id: str | None, owner: str | None, visibility: str,
           member_id: str | None = None) -> dict[str, object]:
    """What the rules see of an image: Glance's target names the owner `project_id` too,
    and `member_id` is the caller's project when it is a member of the image."""
    return {"id": image_id, "project_id": owner, "owner": owner, "visibility": visibility,
            "member_id": member_id}


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
