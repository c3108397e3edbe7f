class ModelConfig:
    def __init__(self, model_path, quantization, dtype):
        self.model_path, self.quantization, self.dtype = model_path, quantization, dtype

    @staticmethod
    def from_server_args(server_args, model_path=None, is_draft_model=False):
        quantization = None if is_draft_model else server_args.quantization
        return ModelConfig(model_path=model_path, quantization=quantization, dtype="auto")
