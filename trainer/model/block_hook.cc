#include "trainer/model/block_hook.h"

namespace baton {
namespace {

thread_local std::shared_ptr<const BlockHook> t_hook;

}  // namespace

ScopedBlockHook::ScopedBlockHook(BlockHook hook) : previous_(std::move(t_hook)) {
  t_hook = std::make_shared<const BlockHook>(std::move(hook));
}

ScopedBlockHook::~ScopedBlockHook() { t_hook = std::move(previous_); }

std::shared_ptr<const BlockHook> CurrentBlockHook() { return t_hook; }

}  // namespace baton
