import argparse
from dataclasses import dataclass


@dataclass
class ServerArgs:
    model_path: str = None
    quantization: str = None
    max_running_requests: int = None
    speculative_algorithm: str = None
    speculative_draft_model_path: str = None
    speculative_num_steps: int = 3
    speculative_unused_knob: int = 4

    def __post_init__(self):
        if self.speculative_algorithm == "EAGLE3":
            self.quantization = None

    def _handle_speculative_decoding(self):
        if self.max_running_requests is None:
            self.max_running_requests = 48
        self.speculative_num_steps = max(1, self.speculative_num_steps)

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--speculative-draft-model-path", "--speculative-draft-model", type=str)
        parser.add_argument("--speculative-num-steps", type=int)
