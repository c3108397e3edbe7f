def run(server_args):
    return server_args.speculative_draft_model_path, server_args.speculative_num_steps
