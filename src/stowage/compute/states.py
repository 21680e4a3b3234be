"""Instance states as Nova names them, and the API `status` they add up to.

vm_state is where the instance rests, task_state what is being done to it,
power_state what the hypervisor last said. The API shows one `status`
computed from the first two, as Nova's `api/openstack/common.py` does.
"""

from __future__ import annotations

__all__ = ["ACTIVE", "BUILDING", "STOPPED", "RESIZED", "ERROR", "DELETED", "SHELVED",
           "SHELVED_OFFLOADED", "PAUSED", "SUSPENDED", "RESCUED", "SOFT_DELETED", "status_of",
           "RUNNING", "SHUTDOWN", "NOSTATE", "PAUSED_POWER", "SUSPENDED_POWER", "TASK"]

# vm_states
ACTIVE = "active"
BUILDING = "building"
STOPPED = "stopped"
RESIZED = "resized"
ERROR = "error"
DELETED = "deleted"
# Shelve (conductor/shelve.py): powered off, snapshot taken, still on its host
# and holding its flavor there; offloaded: no guest, no host, no allocation.
SHELVED = "shelved"
SHELVED_OFFLOADED = "shelved_offloaded"
# Guest actions (conductor/guest_actions.py): the guest kept on its host, and its allocation.
PAUSED = "paused"
SUSPENDED = "suspended"
# Rescue (api/server_rescue.py): the guest boots a rescue disk on its host, holding its
# allocation; unrescue brings back its own disk.
RESCUED = "rescued"
# Deferred delete (`reclaim_instance_interval` > 0): powered off, holding its host and
# allocation until restored, force-deleted or reclaimed by the conductor's periodic task.
SOFT_DELETED = "soft-delete"

# power_state values (Nova's integers)
NOSTATE = 0
RUNNING = 1
PAUSED_POWER = 3  # Nova's power_state.PAUSED
SHUTDOWN = 4
SUSPENDED_POWER = 7  # Nova's power_state.SUSPENDED


class TASK:
    SCHEDULING = "scheduling"
    SPAWNING = "spawning"
    DELETING = "deleting"
    POWERING_OFF = "powering-off"
    POWERING_ON = "powering-on"
    RESIZE_PREP = "resize_prep"
    RESIZE_MIGRATING = "resize_migrating"
    RESIZE_MIGRATED = "resize_migrated"
    RESIZE_FINISH = "resize_finish"
    RESIZE_REVERTING = "resize_reverting"
    RESIZE_CONFIRMING = "resize_confirming"
    # Evacuate (conductor/evacuate.py): a rebuild on another host.
    REBUILDING = "rebuilding"
    REBUILD_BLOCK_DEVICE_MAPPING = "rebuild_block_device_mapping"
    REBUILD_SPAWNING = "rebuild_spawning"
    SHELVING = "shelving"
    SHELVING_IMAGE_PENDING_UPLOAD = "shelving_image_pending_upload"
    SHELVING_IMAGE_UPLOADING = "shelving_image_uploading"
    SHELVING_OFFLOADING = "shelving_offloading"
    UNSHELVING = "unshelving"
    MIGRATING = "migrating"  # live migration
    # Guest actions (conductor/guest_actions.py): the API sets the first, the conductor
    # the "started" one right before it asks the hypervisor.
    REBOOTING = "rebooting"
    REBOOT_STARTED = "reboot_started"
    REBOOTING_HARD = "rebooting_hard"
    REBOOT_STARTED_HARD = "reboot_started_hard"
    PAUSING = "pausing"
    UNPAUSING = "unpausing"
    SUSPENDING = "suspending"
    RESUMING = "resuming"
    SOFT_DELETING = "soft-deleting"
    RESTORING = "restoring"
    RESCUING = "rescuing"
    UNRESCUING = "unrescuing"
    # createImage (conductor/snapshot.py): Nova's snapshot task states, in order.
    IMAGE_SNAPSHOT = "image_snapshot"
    IMAGE_BACKUP = "image_backup"  # createBackup's first, then the two below
    IMAGE_PENDING_UPLOAD = "image_pending_upload"
    IMAGE_UPLOADING = "image_uploading"


# vm_state -> {task_state or "default": status}
_STATE_MAP: dict[str, dict[str | None, str]] = {
    BUILDING: {"default": "BUILD"},
    ACTIVE: {"default": "ACTIVE", TASK.RESIZE_PREP: "RESIZE",
             TASK.RESIZE_MIGRATING: "RESIZE", TASK.RESIZE_MIGRATED: "RESIZE",
             TASK.RESIZE_FINISH: "RESIZE", TASK.MIGRATING: "MIGRATING",
             TASK.REBOOTING: "REBOOT", TASK.REBOOT_STARTED: "REBOOT",
             TASK.REBOOTING_HARD: "HARD_REBOOT", TASK.REBOOT_STARTED_HARD: "HARD_REBOOT"},
    STOPPED: {"default": "SHUTOFF", TASK.RESIZE_PREP: "RESIZE",
              TASK.RESIZE_MIGRATING: "RESIZE", TASK.RESIZE_MIGRATED: "RESIZE",
              TASK.RESIZE_FINISH: "RESIZE"},
    RESIZED: {"default": "VERIFY_RESIZE", TASK.RESIZE_REVERTING: "REVERT_RESIZE"},
    ERROR: {"default": "ERROR"},
    DELETED: {"default": "DELETED"},
    SHELVED: {"default": "SHELVED"},
    SHELVED_OFFLOADED: {"default": "SHELVED_OFFLOADED"},
    PAUSED: {"default": "PAUSED", TASK.MIGRATING: "MIGRATING"},
    SUSPENDED: {"default": "SUSPENDED"},
    RESCUED: {"default": "RESCUE"},
    SOFT_DELETED: {"default": "SOFT_DELETED"},
}
# A rebuild (evacuate) shows REBUILD from every state it may start in, as Nova's map does.
_REBUILD = {task: "REBUILD" for task in (TASK.REBUILDING, TASK.REBUILD_BLOCK_DEVICE_MAPPING,
                                         TASK.REBUILD_SPAWNING)}
for _vm_state in (ACTIVE, STOPPED, ERROR):
    _STATE_MAP[_vm_state].update(_REBUILD)


def status_of(vm_state: str, task_state: str | None) -> str:
    by_task = _STATE_MAP.get(vm_state, {"default": "UNKNOWN"})
    return by_task.get(task_state, by_task["default"])
