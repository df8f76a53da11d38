package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// postInto posts body as JSON to url and decodes the answer into out.
func (c *Conn) postInto(ctx context.Context, url string, body, out any) error {
	resp, err := c.PostJSON(ctx, url, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s: response is not the JSON expected: %v", url, err)
	}
	return nil
}

// LlamaTokenize asks llama-server at root (its address, no path) for
// text's tokens; special adds the BOS it gives a prompt.
func (c *Conn) LlamaTokenize(ctx context.Context, root, text string, special bool) ([]int, error) {
	var out struct {
		Tokens []int `json:"tokens"`
	}
	err := c.postInto(ctx, root+"/tokenize", map[string]any{"content": text, "add_special": special}, &out)
	return out.Tokens, err
}

// LlamaDetokenize asks llama-server at root for the text of tokens.
func (c *Conn) LlamaDetokenize(ctx context.Context, root string, tokens []int) (string, error) {
	var out struct {
		Content string `json:"content"`
	}
	err := c.postInto(ctx, root+"/detokenize", map[string]any{"tokens": tokens}, &out)
	return out.Content, err
}

// VLLMTokenize asks vLLM at root for text's tokens of model (its
// /tokenize: {"model", "prompt", "add_special_tokens"} → {"tokens"}).
func (c *Conn) VLLMTokenize(ctx context.Context, root, model, text string, special bool) ([]int, error) {
	var out struct {
		Tokens []int `json:"tokens"`
	}
	err := c.postInto(ctx, root+"/tokenize", map[string]any{"model": model, "prompt": text, "add_special_tokens": special}, &out)
	return out.Tokens, err
}

// VLLMDetokenize asks vLLM at root for the text of tokens (its
// /detokenize: {"model", "tokens"} → {"prompt"}).
func (c *Conn) VLLMDetokenize(ctx context.Context, root, model string, tokens []int) (string, error) {
	var out struct {
		Prompt string `json:"prompt"`
	}
	err := c.postInto(ctx, root+"/detokenize", map[string]any{"model": model, "tokens": tokens}, &out)
	return out.Prompt, err
}
