from sglang.srt.configs.model_config import ModelConfig


def init(server_args, is_draft_worker):
    return ModelConfig.from_server_args(
        server_args,
        model_path=server_args.model_path
        if not is_draft_worker
        else server_args.speculative_draft_model_path,
        is_draft_model=is_draft_worker,
    )
