"""GET /v2/schemas/image and /v2/schemas/images: the JSON schemas Glance publishes.

Built from the schema the API checks requests with (api.PROPERTIES), plus the
read-only attributes an image shows, so that what is published is what is
enforced. Clients (python-glanceclient, Tempest) read `name` and `properties`.
"""

from __future__ import annotations

from typing import Any

from stowage.web.http import Request, Response, json_response

__all__ = ["image_schema", "images_schema", "show_image_schema", "show_images_schema"]

_SHOWN: dict[str, Any] = {
    "status": {"type": "string", "readOnly": True,
               "enum": ["queued", "saving", "active", "killed", "deleted", "uploading",
                        "importing", "pending_delete", "deactivated"]},
    "created_at": {"type": "string", "readOnly": True},
    "updated_at": {"type": "string", "readOnly": True},
    "size": {"type": ["null", "integer"], "readOnly": True},
    "virtual_size": {"type": ["null", "integer"], "readOnly": True},
    "checksum": {"type": ["null", "string"], "readOnly": True, "maxLength": 32},
    "os_hash_algo": {"type": ["null", "string"], "readOnly": True, "maxLength": 64},
    "os_hash_value": {"type": ["null", "string"], "readOnly": True, "maxLength": 128},
    "self": {"type": "string", "readOnly": True},
    "file": {"type": "string", "readOnly": True},
    "schema": {"type": "string", "readOnly": True},
}
_LINKS = [{"rel": "self", "href": "{self}"}, {"rel": "enclosure", "href": "{file}"},
          {"rel": "describedby", "href": "{schema}"}]


def image_schema() -> dict[str, Any]:
    from stowage.image.api import PROPERTIES  # api.py routes here: import at call time

    return {"name": "image", "properties": {**PROPERTIES, **_SHOWN},
            "additionalProperties": {"type": "string"}, "links": _LINKS}


def images_schema() -> dict[str, Any]:
    return {"name": "images",
            "properties": {"images": {"type": "array", "items": image_schema()},
                           "schema": {"type": "string"}, "first": {"type": "string"},
                           "next": {"type": "string"}},
            "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                      {"rel": "describedby", "href": "{schema}"}]}


def show_image_schema(req: Request) -> Response:
    return json_response(image_schema())


def show_images_schema(req: Request) -> Response:
    return json_response(images_schema())
