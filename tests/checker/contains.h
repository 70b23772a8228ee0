// An assertion for the tests of tests/checker: a message that must contain a phrase.
#pragma once

#include <gtest/gtest.h>

#include <string>

/// Success when @p text contains @p part, else a failure that shows @p text.
inline testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "\"" << part << "\" is not in: " << text;
}
