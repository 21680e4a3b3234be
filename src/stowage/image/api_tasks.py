"""Glance task routes (the records: tasks.py)::

    GET  /v2/tasks                 {"tasks": [...], "first", "schema"}; filters status, type
    GET  /v2/tasks/{task_id}
    POST /v2/tasks                 refused (400): no task type is run from this API
    GET  /v2/images/{image_id}/tasks   the image's import tasks (Glance 2.12)

The /v2/tasks routes are an admin's by Glance's defaults: each needs
`tasks_api_access` (role:admin) besides its own rule (get_task, get_tasks,
add_task). Glance's `import` task fetches an image from a URL
(`import_from`), which needs an outside network this Image service does not
have: a well-formed request for it is a 400 saying so, as a newer Glance
refuses an `import_from` it will not fetch. An image's tasks are shown to
whoever may see the image (get_image), filtered to their project's tasks.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from stowage.errors import NotFound
from stowage.image import images as img
from stowage.image import policy, tasks
from stowage.web import schema_report
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "TASK_SCHEMA"]

TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"type": {"type": "string",
                            "enum": ["import", "api_image_import", "location_import"]},
                   "input": {"type": "object"}},
    "required": ["type", "input"],
}
_NO_URL_IMPORT = ("Task of type '{}' is not available: the Image service has no outside "
                  "network to import from. Create the image, stage its data (PUT "
                  "/v2/images/{{image_id}}/stage) and import it with 'glance-direct'.")


def _stamp(value: Any) -> str | None:
    return None if value is None else str(value.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _stub(task: tasks.Task) -> dict[str, Any]:
    return {"id": task.id, "type": task.type, "status": task.status, "owner": task.owner,
            "expires_at": _stamp(task.expires_at), "created_at": _stamp(task.created_at),
            "updated_at": _stamp(task.updated_at), "self": f"/v2/tasks/{task.id}",
            "schema": "/v2/schemas/task"}


def view(task: tasks.Task) -> dict[str, Any]:
    return {**_stub(task), "input": task.input, "result": task.result,
            "message": task.message, "image_id": task.image_id,
            "request_id": task.request_id, "user_id": task.user_id}


def _allow(req: Request, action: str) -> None:
    target = req.context.policy_target()
    for rule in ("tasks_api_access", action):
        if not req.app.enforcer.allowed(rule, req.context, target):
            raise policy.denied(rule)


def list_tasks(req: Request) -> Response:
    _allow(req, "get_tasks")
    status, kind = req.query_values("status"), req.query_values("type")
    with req.app.db.read() as conn:
        found = tasks.list_tasks(conn, req.context, status=status[-1] if status else None,
                                 task_type=kind[-1] if kind else None)
    return json_response({"tasks": [_stub(t) for t in found], "first": "/v2/tasks",
                          "schema": "/v2/schemas/tasks"})


def show_task(req: Request) -> Response:
    _allow(req, "get_task")
    with req.app.db.read() as conn:
        task = tasks.get(conn, req.params["task_id"], req.context)
    return json_response(view(task))


def create_task(req: Request) -> Response:
    _allow(req, "add_task")
    try:
        body = load_json(req.body)
    except InvalidJSON:
        raise HTTPError(400, "Malformed JSON in request body.") from None
    try:
        jsonschema.Draft4Validator(TASK_SCHEMA).validate(body)
    except jsonschema.ValidationError as exc:
        raise HTTPError(400, "Provided object does not match schema 'task': "
                             f"{schema_report.message(exc)}") from None
    raise HTTPError(400, _NO_URL_IMPORT.format(body["type"]))


def image_tasks(req: Request) -> Response:
    image_id = req.params["image_id"]
    with req.app.db.read() as conn:
        try:
            image = img.get(conn, image_id, req.context)
            policy.check(req.app.enforcer, req.context, "get_image", image)
        except NotFound:
            raise HTTPError(404, f"Image with ID {image_id} not found.") from None
        found = tasks.of_image(conn, image.id, req.context)
    return json_response({"tasks": [view(t) for t in found]})


ROUTES = [
    Route("GET", "/v2/tasks", list_tasks),
    Route("POST", "/v2/tasks", create_task, json_body=True),
    Route("GET", "/v2/tasks/{task_id}", show_task),
    Route("GET", "/v2/images/{image_id}/tasks", image_tasks),
]
