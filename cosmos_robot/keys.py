"""Feature key names, in one place (LeRobot's conventions; FACTS.md)."""

OBS_IMAGES_PREFIX = "observation.images."
OBS_STATE = "observation.state"
OBS_ENV_STATE = "observation.environment_state"
ACTION = "action"
REWARD = "next.reward"
SUCCESS = "next.success"
DONE = "next.done"
TASK = "task"

DEFAULT_CAMERA = "top"

# Columns LeRobot adds to every frame; they are recomputed on write, never passed to add_frame.
LEROBOT_INDEX_KEYS = ("timestamp", "frame_index", "episode_index", "index", "task_index")

# Our sidecar metadata file inside a LeRobot dataset root (info.json rejects unknown keys).
META_FILE = "meta/cosmos_robot.json"
