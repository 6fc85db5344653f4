"""Feature key names, in one place (LeRobot's dataset conventions and our envs' observation keys)."""

OBS_IMAGES_PREFIX = "observation.images."
OBS_STATE = "observation.state"
OBS_ENV_STATE = "observation.environment_state"
ACTION = "action"
REWARD = "next.reward"
SUCCESS = "next.success"
DONE = "next.done"
TASK = "task"

DEFAULT_CAMERA = "top"

# Observation keys of our gymnasium envs (the pixels + agent_pos convention of gym-pusht and LeRobot's envs).
PIXELS = "pixels"
AGENT_POS = "agent_pos"

# Columns LeRobot adds to every frame; they are recomputed on write, never passed to add_frame.
LEROBOT_INDEX_KEYS = ("timestamp", "frame_index", "episode_index", "index", "task_index")

# Our sidecar metadata file inside a LeRobot dataset root (info.json rejects unknown keys).
META_FILE = "meta/cosmos_robot.json"
