"""Backends implementing the WorldModel protocol of cosmos_robot.interface besides the native model (cosmos_robot.world_model)."""
