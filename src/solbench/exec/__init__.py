"""Where evaluations run: serially, a pool of lanes over one host's GPUs (or CPU lanes), or a Ray cluster."""

from solbench.exec.api import EXECUTORS, evaluate_jobs
from solbench.exec.jobs import LANE_DIED_FLAG, STOPPED_FLAG, Job
from solbench.exec.lanes import Lane, LaneError, parse_gpus, parse_lanes, plan_lanes
from solbench.exec.ray_executor import RayUnavailable

__all__ = ["EXECUTORS", "LANE_DIED_FLAG", "STOPPED_FLAG", "Job", "Lane", "LaneError", "RayUnavailable", "evaluate_jobs", "parse_gpus",
           "parse_lanes", "plan_lanes"]
