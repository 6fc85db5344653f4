"""Backends behind the WorldActionModel facade (the native MoT lives in cosmos_robot.model)."""
