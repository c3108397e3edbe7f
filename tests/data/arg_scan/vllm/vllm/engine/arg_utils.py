import json

from vllm.config.speculative import SpeculativeConfig


class EngineArgs:
    speculative_config: dict | None = None
    engram_config: dict | None = None

    def create_speculative_config(self, target_model_config):
        self.speculative_config.update(
            {"target_model_config": target_model_config, "enable_chunked_prefill": True}
        )
        return SpeculativeConfig(**self.speculative_config)

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--speculative-config", "-sc", type=json.loads)
