def propose(spec_config):
    return spec_config.num_speculative_tokens, spec_config.method
