from pydantic import Field, SkipValidation
from vllm.config.model import ModelConfig


class SpeculativeConfig:
    num_speculative_tokens: int = Field(default=None, gt=0)
    model: str | None = None
    method: str | None = None
    quantization: str | None = None
    enable_chunked_prefill: bool = None
    target_model_config: SkipValidation[ModelConfig] = None

    def __post_init__(self):
        if self.quantization is None:
            self.quantization = self.target_model_config.quantization
        self.draft_model_config = ModelConfig(
            model=self.model, dtype=self.target_model_config.dtype, quantization=self.quantization
        )
