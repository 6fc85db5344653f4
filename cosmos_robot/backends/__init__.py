"""Backends implementing the WorldModel protocol (cosmos_robot.interface) besides the native model."""
